"""A campaign: plan every ordered pair x dimension, run them node-disjoint, keep a journal."""
