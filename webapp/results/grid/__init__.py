"""The grids, MaDDash-style (rows = sources, columns = destinations, a band per stream
setting): `bands` the model both the grid page and the MaDDash JSON are made from, `limits`
the colours, `queries` the reads that fill them."""
