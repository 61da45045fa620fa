"""The precision strings both parsers see: python/mpitempo/io/params.py percent_value (tests/py/test_adaptive.py)
and the C core's mt_parse_percent (tests/mpi/test_adaptive_mpi.py). None: refused."""
PERCENT_CASES = [("1%", 0.01), ("0.5%", 0.005), ("off", 0.0), ("50%", 0.5), ("0.01%", 0.0001), ("1e-1%", 0.001),
                 ("+2%", 0.02), ("0%", None), ("1", None), ("0.01", None), ("200%", None), ("50.1%", None),
                 ("-1%", None), ("1%%", None), ("abc", None), ("", None), (" 1%", None), ("1% ", None),
                 ("nan%", None), ("inf%", None), ("OFF", None)]
