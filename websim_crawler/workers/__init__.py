"""Page analysis in worker processes: the pool the analysis pipeline and ``websim extract`` use.

- ``pool``: ``AnalysisPool``, which admits pages, sends them to the workers and reads their
  outcomes, each page with its budget of time, memory and elements (settings: ``config.pool``);
- ``tasks``: what a worker runs (``analyse_task``, ``stage_task``) under its CPU budget, and the
  ``PageOutcome`` it sends back;
- ``warmup``: loaded once by the pool's fork server so that every worker starts warm.
"""
