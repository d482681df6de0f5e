"""A measurement: K concurrent transfers of one file between two nodes, and the pair's RTT."""
