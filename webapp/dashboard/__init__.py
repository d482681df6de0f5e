"""Server-rendered pages: the MaDDash-style grid, pair history and the plot pages."""
