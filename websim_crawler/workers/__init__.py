"""Page analysis in worker processes: the pool the analysis pipeline and ``websim extract`` use.

- ``pool``: ``AnalysisPool``, each page's budget of time, memory and elements (its settings are
  ``config.pool``);
- ``warmup``: loaded once by the pool's fork server so that every worker starts warm.
"""
