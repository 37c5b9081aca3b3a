"""Meta-learning over the network-condition grid: Reptile and the meta-model bank (to come)."""
