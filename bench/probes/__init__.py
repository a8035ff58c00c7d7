"""Probes: tools that each answered one design question and are kept to ask it again (bench/README.md).

They print their figures and assert nothing; no BENCHMARKS.md section and no result file comes from them.
"""
