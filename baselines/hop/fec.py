"""HOP's block code: a systematic MDS packet-erasure code (Chiariotti et al., IEEE/ACM ToN 2021).

Reed-Solomon over GF(2^8) from the `zfec` library (C, Vandermonde matrix):
a block of ``block_len`` bytes is cut into ``k`` source packets of
``packet_bytes`` bytes each (the last ones zero-padded), and ``n - k`` repair
packets of the same size are added. Any ``k`` of the ``n`` packets rebuild the
block exactly; the first ``k`` packets *are* the source data (systematic), so a
receiver that gets them needs no decoding at all. GF(2^8) limits a block to
``n <= 256`` packets.

The emulator only counts packets; this codec is for the deployment path and
for checking that the counts the schedulers rely on are those of a real code.
"""

from __future__ import annotations

import zfec

from envs.errors import FalconInputError

MAX_PACKETS = 256  # GF(2^8): at most 256 distinct evaluation points


class FecError(FalconInputError):
    """A block that cannot be coded or decoded (bad arguments, too few packets)."""


def packets_needed(block_bytes: int, packet_payload: int) -> int:
    """Source packets ``k`` needed for ``block_bytes`` bytes at ``packet_payload``
    bytes per packet (ceiling; 0 bytes need 0 packets)."""
    if block_bytes < 0:
        raise FecError(f"block_bytes={block_bytes}: expected >= 0 bytes")
    if packet_payload < 1:
        raise FecError(f"packet_payload={packet_payload}: expected >= 1 byte")
    return -(-block_bytes // packet_payload)


def _check_code(k: int, n: int) -> None:
    if not 1 <= k <= n <= MAX_PACKETS:
        raise FecError(f"k={k}, n={n}: expected 1 <= k <= n <= {MAX_PACKETS}")


def encode(block: bytes, k: int, n: int, packet_bytes: int) -> list[bytes]:
    """Code ``block`` into ``n`` packets of ``packet_bytes`` bytes each.

    The block (at most ``k * packet_bytes`` bytes) is split into ``k`` source
    packets, zero-padded to ``packet_bytes``; packets ``0..k-1`` are those
    source packets and ``k..n-1`` the repair packets.
    """
    _check_code(k, n)
    if packet_bytes < 1:
        raise FecError(f"packet_bytes={packet_bytes}: expected >= 1 byte")
    if len(block) > k * packet_bytes:
        raise FecError(
            f"block of {len(block)} bytes: does not fit in k={k} packets of "
            f"{packet_bytes} bytes ({k * packet_bytes} bytes)"
        )
    padded = bytes(block).ljust(k * packet_bytes, b"\0")
    source = tuple(padded[i * packet_bytes : (i + 1) * packet_bytes] for i in range(k))
    return [bytes(p) for p in zfec.Encoder(k, n).encode(source)]


def decode(packets: dict[int, bytes], k: int, n: int, block_len: int) -> bytes:
    """Rebuild the ``block_len``-byte block from any ``k`` of its ``n`` packets.

    ``packets`` maps a packet index (0..n-1, as returned by :func:`encode`) to
    its bytes; all packets have the same size. Extra packets beyond ``k`` are
    ignored (source packets are preferred: they need no arithmetic).
    """
    _check_code(k, n)
    if len(packets) < k:
        raise FecError(f"received {len(packets)} of {n} packets: need at least k={k} to decode")
    bad = sorted(i for i in packets if not 0 <= i < n)
    if bad:
        raise FecError(f"packet index {bad[0]}: expected 0 <= index < n={n}")
    sizes = {len(p) for p in packets.values()}
    if len(sizes) != 1:
        raise FecError(f"packet sizes {sorted(sizes)} bytes: expected all packets of one size")
    packet_bytes = sizes.pop()
    if not 0 <= block_len <= k * packet_bytes:
        raise FecError(
            f"block_len={block_len}: expected 0..{k * packet_bytes} bytes "
            f"(k={k} packets of {packet_bytes} bytes)"
        )
    nums = tuple(sorted(packets)[:k])
    source = zfec.Decoder(k, n).decode(tuple(packets[i] for i in nums), nums)
    return b"".join(bytes(p) for p in source)[:block_len]
