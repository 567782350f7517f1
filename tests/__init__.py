"""proctor's tests, laid out like src/proctor (tests/README.md says where a new test goes)."""
