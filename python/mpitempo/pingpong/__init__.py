"""The small-message ping-pong method of paper 004 (Luecke et al.): the C core
`mpitempo-pingpong` measures, this package analyses and presents.

- stats.py   pure statistics (section 3.4): summary, filtering, rates, histograms
- data.py    reading a run (meta.json + timings.csv, or the JSON document)
- analysis.py  turning a run into result records (pure)
- report.py  text outputs: Appendix C summary, full output, tables
- plots.py   histogram and rate-curve figures (matplotlib, Agg)
"""
