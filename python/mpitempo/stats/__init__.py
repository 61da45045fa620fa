"""Statistics as pure functions on arrays: no file reading, no DuckDB, no printing.

describe: descriptive statistics (one ``describe`` for every output), quantiles, the confidence
intervals of the median and the mean; outliers: the Tukey and cut_coef filters; compare:
Mann-Whitney U on per-mpirun medians, Holm; diagnostics: the method checks of Hunold and
Carpen-Amarie 2016; pingpong: the conventions of Luecke et al. 2009; imbalance: exit skew.
The same statistics in bulk over DuckDB are in ``mpitempo.analysis.summary`` and
``mpitempo.analysis.filtering``.
"""
