"""Helpers several test areas share (tests/ is on sys.path through its conftest.py)."""
