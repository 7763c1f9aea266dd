"""The record path and what drives it: ``path`` (the steps every record takes), ``batch`` (one
invocation of a batch decorator, a plain function's records one at a time), ``concurrent`` (an
``async def``'s records, several at once), ``request`` (one HTTP request), ``options`` (what every
decorator takes) and ``event_loop`` (the loop ``async def`` functions run on)."""
