"""Statistics on campaign data: pure functions on arrays, plus bulk versions over DuckDB.

outliers: Tukey and cut_coef filters; summary: descriptive statistics and median CIs;
compare: Mann-Whitney U on per-mpirun medians, Holm; diagnostics: the method checks of paper 001.
"""
