"""What tests share: fake models and servers, fixtures, input corpora, worker scripts, and data/ (the files
tests read)."""
