"""Cells that more than one mode's tests run."""

#: A display whose JSON is encodable only under the recursion limit the cell
#: raised, not under the runtime's: every mode must show its text instead.
DEEP_JSON = """\
import sys
sys.setrecursionlimit(100_000)
class Deep:
    def _repr_json_(self):
        value = []
        for _ in range(5000):
            value = [value]
        return value
    def __repr__(self):
        return "Deep()"
Deep()
"""
