"""The view-stats service: a blog's article view statistics on lambda_kit.

One module per function (``ingest``, ``counter``, ``aggregator``, ``milestones``, ``clickstream``),
each exposing ``handler``; the domain rules they share live in ``views`` (view events, event ids,
keys) and ``aggregates`` (site aggregates, milestones); ``clients`` holds settings and AWS clients.
"""
