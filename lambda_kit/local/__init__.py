"""The local stack: the view-stats service (or any serverless.yml) on one machine.

Depends on the rest of lambda_kit; nothing in the core depends on it.
"""
