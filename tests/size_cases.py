"""The message-size strings both parsers see: python/mpitempo/io/sizes.py parse_sizes (tests/py/test_sizes_shared.py)
and the C core's mt_parse_size_list (tests/mpi/test_sizes_shared_mpi.py, through mpitempo-bench --check-args).
One grammar: blanks around, digits, blanks, then K, M or G (powers of 1024) optionally followed by B or iB, or
a plain B; case-insensitive; at most 2^63 - 1 bytes. A list is comma-separated; a range
A-B is the powers of two from A to B (from 0: 0, 1, 2, 4, ...). 0 B is a size (a message of count 0) in
`run --msizes` and the core's --msizes. None: refused."""
SIZE_CASES = [
    ("8", [8]), ("8B", [8]), ("8b", [8]), ("1K", [1024]), ("1k", [1024]), ("1KB", [1024]), ("1KiB", [1024]),
    ("1kib", [1024]), ("2M", [2 << 20]), ("2MiB", [2 << 20]), ("1G", [1 << 30]), ("1GB", [1 << 30]),
    (" 8 ", [8]), ("8 K", [8192]), ("8,1K", [8, 1024]), ("4-64", [4, 8, 16, 32, 64]), ("1K-4K", [1024, 2048, 4096]),
    ("8B-32B", [8, 16, 32]), ("3-20", [3, 6, 12]),
    ("0", [0]), ("0-8", [0, 1, 2, 4, 8]), ("0B", [0]),
    ("8388607T", None), ("-8", None), ("8KI", None), ("8IB", None), ("8BB", None), ("8KBB", None),
    ("K", None), ("", None), ("8,", None), (",8", None), ("8,,16", None), ("64-8", None), ("8.5", None),
    ("1e3", None), ("0x10", None), ("+8", None), ("8 B x", None), ("8589934592G", None), ("9223372036854775808", None),
    ("99999999999999999999", None), ("8,8", None),
]
