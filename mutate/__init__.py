"""Mutation testing (``make mutate``): see ``__main__``."""
