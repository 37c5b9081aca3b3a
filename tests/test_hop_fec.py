"""HOP's systematic MDS packet code (baselines/hop/fec.py): any k of n decode."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.hop.fec import FecError, decode, encode, packets_needed
from envs.errors import FalconInputError


@st.composite
def coded_blocks(draw):
    """(block, k, n, packet_bytes, kept indices): a random code and erasure pattern."""
    n = draw(st.integers(1, 40))
    k = draw(st.integers(1, n))
    packet_bytes = draw(st.integers(1, 64))
    block = draw(st.binary(min_size=0, max_size=k * packet_bytes))
    erased = draw(st.integers(0, n))
    kept = draw(st.permutations(range(n)))[erased:]
    return block, k, n, packet_bytes, kept


@settings(max_examples=500, deadline=None)
@given(coded_blocks())
def test_any_k_of_n_decode_and_fewer_fail_cleanly(case):
    block, k, n, packet_bytes, kept = case
    packets = encode(block, k, n, packet_bytes)
    assert len(packets) == n
    assert all(len(p) == packet_bytes for p in packets)
    # systematic: the first k packets are the (zero-padded) data
    assert b"".join(packets[:k]) == block.ljust(k * packet_bytes, b"\0")
    received = {i: packets[i] for i in kept}
    if len(received) >= k:  # at most n - k erasures
        assert decode(received, k, n, len(block)) == block
    else:
        with pytest.raises(
            FecError, match=f"received {len(received)} of {n} packets: need at least k={k}"
        ):
            decode(received, k, n, len(block))


def test_the_largest_code_recovers_from_repair_packets_only():
    block = bytes(range(256)) * 100
    packets = encode(block, 100, 256, 256)
    repair_only = {i: packets[i] for i in range(156, 256)}
    assert decode(repair_only, 100, 256, len(block)) == block


def test_fec_error_is_an_input_error():
    assert issubclass(FecError, FalconInputError)
    assert issubclass(FecError, ValueError)


@pytest.mark.parametrize(
    ("k", "n", "match"),
    [(0, 4, "k=0, n=4"), (5, 4, "k=5, n=4"), (1, 257, "n=257"), (-1, 1, "k=-1")],
)
def test_bad_code_parameters_are_one_line_errors(k, n, match):
    for call in (lambda: encode(b"x", k, n, 8), lambda: decode({0: b"x"}, k, n, 1)):
        with pytest.raises(FecError, match=match) as err:
            call()
        assert "\n" not in str(err.value)


def test_bad_packets_and_blocks_are_one_line_errors():
    packets = encode(b"hello world", 2, 4, 8)
    cases = [
        (lambda: encode(b"x" * 17, 2, 4, 8), "block of 17 bytes"),
        (lambda: encode(b"x", 2, 4, 0), "packet_bytes=0"),
        (lambda: decode({0: packets[0], 7: packets[1]}, 2, 4, 11), "packet index 7"),
        (lambda: decode({0: packets[0], 1: packets[1][:3]}, 2, 4, 11), r"packet sizes \[3, 8\]"),
        (lambda: decode({0: packets[0], 1: packets[1]}, 2, 4, 17), "block_len=17"),
        (lambda: packets_needed(10, 0), "packet_payload=0"),
        (lambda: packets_needed(-1, 10), "block_bytes=-1"),
    ]
    for call, match in cases:
        with pytest.raises(FecError, match=match) as err:
            call()
        assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("block_bytes", "payload", "k"),
    [(0, 1500, 0), (1, 1500, 1), (1500, 1500, 1), (1501, 1500, 2), (145_000, 1500, 97)],
)
def test_packets_needed_is_the_ceiling(block_bytes, payload, k):
    assert packets_needed(block_bytes, payload) == k
