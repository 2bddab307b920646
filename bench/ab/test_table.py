"""bench/ab/table.py's medians, ratios and flags: python3 -m unittest discover bench/ab"""

import unittest

import table

RUNS = """\
old keyword 32 1 1000 3.0 9.0 0 0.20
new keyword 32 1 900 3.3 9.9 0 0.30
old keyword 32 2 1100 2.9 8.0 0 0.25
new keyword 32 2 1210 2.8 8.8 0 0.25
old keyword 32 3 1200 2.8 7.0 0 0.22
new keyword 32 3 1000 3.1 7.7 0 0.33
old health 32 1 50000 0.5 1.0 0
new health 32 1 50000 0.5 1.0 2
old add 8 1 10 400 600 0
"""


class TableTest(unittest.TestCase):
    def setUp(self):
        self.rows = table.parse(RUNS.splitlines())

    def test_medians_per_side_and_ratio_of_medians(self):
        keyword = self.rows[0]
        self.assertEqual((keyword.old.rps, keyword.new.rps), (1100, 1000))
        self.assertEqual((keyword.old.p50, keyword.new.p50), (2.9, 3.1))
        self.assertAlmostEqual(keyword.ratio(), 1000 / 1100)
        self.assertEqual([round(x, 2) for x in keyword.per_round()], [0.9, 1.1, 0.83])

    def test_a_row_one_side_lacks_is_left_out(self):
        self.assertEqual([r.name for r in self.rows], ["keyword", "health"])

    def test_flags_a_slow_row_and_errors(self):
        text = table.markdown(self.rows)
        keyword, health = text.splitlines()[2:]
        self.assertIn("**0.91x**", keyword)
        self.assertIn("**below 0.95x**", keyword)
        self.assertIn("0.90, 1.10, 0.83", keyword)
        self.assertIn("1.07x", keyword)  # p50 3.1 / 2.9
        self.assertIn("0.220 → 0.300 | 1.36x", keyword)  # CPU-ms medians and their ratio
        self.assertIn("n/a → n/a | n/a", health)  # not measured: older runs' lines
        self.assertNotIn("below", health)
        self.assertIn("**errors**", health)
        self.assertIn("GET /v1/health, 32 connections", health)
        self.assertEqual(table.verdict(self.rows), "**Flagged: keyword, health** (req/s below 0.95x of the old binary, or errors).")

    def test_nothing_flagged(self):
        rows = table.parse(["old health 1 1 10 1 2 0", "new health 1 1 10 1 2 0"])
        self.assertEqual(table.verdict(rows), "No row below 0.95x and no errors.")
        self.assertIn("GET /v1/health, 1 connection |", table.markdown(rows))


if __name__ == "__main__":
    unittest.main()
