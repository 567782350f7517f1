"""A small prompt and suite in the format of probsem's CogSci2023 branch (a tug-of-war Church program)."""

from __future__ import annotations

COGSCI_PROMPT = (
    ";; This Church program models a tug-of-war game.\n\n(define (strength person) (gaussian 50 20))\n\n"
    ";; Now, let us translate some user-defined statements.\n"
)
COGSCI_SUITE = {  # the shape of the branch's inputs/tug-of-war_AV-1a.json and inputs/test_A.json
    "premise": ";;",
    "context": [
        {"text": ";; Jack is strong.", "expected": 0},
        {"text": ";; Jack isn't very weak.", "expected": 1},
        {"text": ";; Jack is somewhat strong.", "expected": -1},
    ],
    "query": ";; Query: how strong is Jack?",
    "programs": ["(> (strength 'jack) 70)", "(> (strength 'jack) 50)", "(< (strength 'jack) 30)"],
}
