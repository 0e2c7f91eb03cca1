"""``tianma bench``: public memory benchmarks, baselines, performance and learning, one report.

Subcommands (``tianma bench --help``): ``locomo``, ``prefeval``, ``perf``, ``learning`` and
``all``. Each prints a table, writes JSON under the results folder, and ``all`` writes one
Markdown report with PNG plots. Needs the ``[bench]`` extra (matplotlib, bm25s, tiktoken).
"""
