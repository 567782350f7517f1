"""How many rows a rule reads before it decides: the probe sizes rules share, named once.

A leaf module (it imports nothing) so that every rule module can import it: ``source_rows``, where the first two
were defined, imports ``target_rules``, which imports ``continuation_rules``, so those could not import them from
there. A rule whose probe differs on purpose keeps its own constant, with a comment saying why."""

PROBE_ROWS = 200  # rows a rule looks at before it reads the whole task (most tasks are told apart in these)
MIN_ROWS = 4  # a pattern over fewer rows is chance
FIRST_ROWS = 20  # rows read before a rule of 'most rows' gives up where none of them shows the pattern
# rows whose printed fields are read (``source_rows.printed_values``): what is wrong with some rows only (a value
# missing, a carriage return, a field absent) is spread through a file or sits in a file of its own, and reading
# fields is cheap
PRINTED_ROWS = 1000
