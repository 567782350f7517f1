"""Log-likelihoods over an OpenAI-compatible API: which way a server can score (``echo`` + ``logprobs``,
vLLM's ``prompt_logprobs``, each trusted only after a self-check, see ``openai_logprobs``; or, when asked,
``top_logprobs`` of the next generated token, which scores single-token continuations such as MMLU-style
letters only), and the scoring calls themselves. A backend that cannot score says so
(``supports_loglikelihood`` is False) and multiple-choice tasks switch to their generation formulation.

A mixin of ``OpenAIModel`` (``openai_compat.py``), kept apart from its identity and generation: it reads
only the settings and the HTTP client that ``OpenAIModel`` sets up (declared below), and holds the mode
it settles on.
"""

from __future__ import annotations

import logging
from typing import Sequence

from proctor.core.errors import ProctorError
from proctor.core.model_requests import (
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.base import Progress
from proctor.models.logprob_checks import check_agreement, check_greedy, check_sum, contradicts
from proctor.models.openai.http import ApiClient, ApiError, map_progress
from proctor.models.openai.logprobs import (
    PromptTokens,
    continuation_scores,
    parse_echo,
    parse_prompt_logprobs,
    self_check,
)
from proctor.models.reply_checks import (
    Where,
    a_dict,
    a_list,
    a_string,
    check_prompt_count,
    check_usage,
    describe_request,
    logprob,
    ordered_choices,
)

log = logging.getLogger(__name__)

SELF_CHECK_TEXT = "The capital of France is"
# The same prompt scored alone and inside a batch: kernels may differ by batch shape (float16/bfloat16 noise: most
# positions far under a tenth of a nat, a rare one where a logit moves by one bfloat16 step, up to a quarter of a
# nat); another prompt's log-probs differ by whole nats. So the server is refused where one position differs by
# more than BATCH_FAR_ABS (+ BATCH_SLACK_REL), or most positions by more than BATCH_SLACK_ABS.
BATCH_SLACK_ABS = 0.1
BATCH_SLACK_REL = 0.02
BATCH_FAR_ABS = 1.0


def _split(r: LoglikelihoodRequest) -> tuple[str, str]:
    """(context, continuation) with the context's trailing whitespace moved if the request says so."""
    context, continuation = r.context, r.continuation
    if r.move_whitespace:
        stripped = context.rstrip()
        context, continuation = stripped, context[len(stripped) :] + continuation
    return context, continuation


def _generated(lp: dict[str, object], where: Where) -> tuple[str | None, float | None]:
    """The generated token and its log-prob, where the reply lists them (the top log-probs say the rest)."""
    tokens, values = lp.get("tokens"), lp.get("token_logprobs")
    if not isinstance(tokens, list) or not tokens or not isinstance(values, list) or not values:
        return None, None
    token = a_string(tokens[0], where, "choices[0].logprobs.tokens[0]")
    return token, logprob(values[0], where, "choices[0].logprobs.token_logprobs[0]")


class OpenAIScoring:
    """``loglikelihood``, ``rolling_loglikelihood`` and the log-likelihood mode, mixed into
    :class:`proctor.models.openai.compat.OpenAIModel`."""

    model: str
    name: str
    shown_url: str
    endpoint: str
    loglikelihood_option: str
    top_k: int
    batch: int
    client: ApiClient
    _mode: str | None
    _mode_reason: str
    _fallback: bool
    _lists_ok: bool
    _batch_checked: bool
    _min_tokens_ok: bool

    def _where(self, path: str, prompt: str, head: str = "the request") -> Where:
        """Whom a reply to the request of ``prompt`` at ``path`` came from, for ``reply_checks``' messages
        (secrets masked)."""
        return Where(self.shown_url + path, describe_request(prompt, head), self.client.scrub, prompt)

    # ------------------------------------------------------------------ log-likelihood: capability
    @property
    def supports_loglikelihood(self) -> bool:
        return self.loglikelihood_mode != "none"

    @property
    def loglikelihood_mode(self) -> str:
        if self._mode is None:
            with self.client.origins.set_aside():  # the self-check's replies answer no question of the task
                self._mode, self._mode_reason = self._resolve_mode()
            log.info("model '%s': log-likelihood mode '%s' (%s)", self.name, self._mode, self._mode_reason)
        return self._mode

    @property
    def loglikelihood_reason(self) -> str | None:
        mode = self.loglikelihood_mode
        return f"log-likelihood mode '{mode}' at {self.shown_url}: {self._mode_reason}"

    @property
    def loglikelihood_fallback(self) -> bool:
        """True when the self-check (not a setting) found this server unable to score."""
        return self.loglikelihood_mode == "none" and self._fallback

    def _resolve_mode(self) -> tuple[str, str]:
        option = self.loglikelihood_option
        if option == "none":
            return "none", "disabled by option"
        if option == "top_logprobs":
            if not self._next_tokens(SELF_CHECK_TEXT):
                raise ProctorError(
                    f"'{self.shown_url}' returns no top_logprobs for generated tokens: cannot score choices"
                )
            return "top_logprobs", "top log-probs of the next token (single-token continuations only)"
        if self.endpoint == "chat" and option == "auto":
            return "none", "chat endpoint: no prompt log-probs"
        reasons = []
        for mode in ("echo", "prompt_logprobs") if option == "auto" else (option,):

            def score_one(text: str, m: str = mode) -> PromptTokens | None:  # this mode, not the loop's last
                return self._score_prompts([text], m)[0]

            result = self_check(score_one, self._next_tokens)
            if result.ok:
                return mode, f"self-check passed: {result.reason}"
            reasons.append(f"{mode}: {result.reason}")
        why = "; ".join(reasons)
        if option != "auto":
            raise ProctorError(f"refusing log-likelihoods from '{self.shown_url}' by '{option}': {why}")
        log.warning("model '%s' cannot score log-likelihoods (%s)", self.name, why)
        self._fallback = True
        return "none", f"the self-check failed ({why})"

    def _next_tokens(self, prompt: str, k: int = 5, max_retries: int | None = None) -> dict[str, float] | None:
        """Top log-probs of the next token (the generation path), or None if the server gives none.

        Asks for at least one token (``min_tokens``, understood by vLLM and llama.cpp): a server that
        stops at end-of-sequence otherwise returns no token and no log-probs.
        """
        payload = {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": k}
        forced = self._min_tokens_ok  # min_tokens masks end-of-sequence: the token generated may not rank first
        if self._min_tokens_ok:
            try:
                data = self.client.post("/completions", {**payload, "min_tokens": 1}, max_retries=max_retries)
            except ApiError as exc:
                if exc.status not in (400, 422):
                    raise
                self._min_tokens_ok = False
                forced = False
        if not self._min_tokens_ok:
            data = self.client.post("/completions", payload, max_retries=max_retries)
        where = self._where("/completions", prompt)
        check_usage(data, where)
        lp = ordered_choices(data, 1, where)[0].get("logprobs")
        if lp is None:
            return None  # a server without log-probs for generated tokens
        lp = a_dict(lp, where, "choices[0].logprobs")
        tops = lp.get("top_logprobs")
        if tops is None:
            return None
        tops = a_list(tops, where, "choices[0].logprobs.top_logprobs")
        if not tops or tops[0] is None:
            return None
        top = a_dict(tops[0], where, "choices[0].logprobs.top_logprobs[0]")
        field = "choices[0].logprobs.top_logprobs[0]"
        listed = {str(t): logprob(v, where, f"{field}[{t!r}]") for t, v in top.items()}
        token, own = _generated(lp, where)
        check_sum(listed, where, field)
        if token is not None and own is not None and token in listed:
            check_agreement([(field, token, listed[token], own)] if contradicts(token, own, listed) else [], 1, where)
        if token is not None and own is not None and not forced:
            check_greedy(token, own, listed, where, field)
        return listed or None

    # ------------------------------------------------------------------ log-likelihood: scoring
    def _score_prompts(self, prompts: list[str], mode: str) -> list[PromptTokens | None]:
        """Per-token prompt log-probs, ``batch`` prompts per request where the server takes lists."""
        extra = {"echo": True, "logprobs": 1} if mode == "echo" else {"prompt_logprobs": 1}
        payload = {"model": self.model, "max_tokens": 1, "temperature": 0.0, **extra}

        def parse(choice: dict[str, object], prompt: str, head: str) -> PromptTokens | None:
            at = self._where("/completions", prompt, head)
            return parse_echo(choice, prompt, at) if mode == "echo" else parse_prompt_logprobs(choice, prompt, at)

        if len(prompts) > 1 and self._lists_ok:
            try:
                data = self.client.post("/completions", {**payload, "prompt": prompts})
            except ApiError as exc:
                if exc.status not in (400, 422):
                    raise
                log.info("'%s' does not take lists of prompts: sending them one by one", self.shown_url)
                self._lists_ok = False
            else:
                n = len(prompts)
                listed = self._where("/completions", prompts[0], f"a request of {n} prompts, the first")
                counts = check_usage(data, listed)
                choices = ordered_choices(data, n, listed)
                parsed = [
                    parse(c, p, f"prompt {k} of a request of {n}") for k, (c, p) in enumerate(zip(choices, prompts))
                ]
                check_prompt_count(counts, _echoed(parsed), listed)
                return parsed
        out = []
        for p in prompts:
            reply = self.client.post("/completions", {**payload, "prompt": p})
            at = self._where("/completions", p)
            counts = check_usage(reply, at)
            out.append(parse(ordered_choices(reply, 1, at)[0], p, "the request"))
            check_prompt_count(counts, _echoed(out[-1:]), at)
        return out

    def _cannot(self) -> ProctorError:
        return ProctorError(
            f"model '{self.name}' at {self.shown_url} cannot score log-likelihoods ({self._mode_reason}). "
            "Multiple-choice tasks run on it through --mc-format generate (the default when a backend cannot score); "
            "perplexity and custom log-likelihood tasks need a server with trustworthy prompt log-probs (vLLM)."
        )

    def loglikelihood(
        self, requests: Sequence[LoglikelihoodRequest], progress: Progress | None = None
    ) -> list[LoglikelihoodResult]:
        if any(r.images for r in requests):
            raise ProctorError(
                f"model '{self.name}' (OpenAI-compatible API) cannot score log-likelihoods with images: "
                "prompt log-probs come from the text-only /completions endpoint. Run image multiple-choice "
                "tasks with --mc-format generate (the default for this backend)."
            )
        mode = self.loglikelihood_mode
        if mode == "none":
            raise self._cannot()
        split = [_split(r) for r in requests]
        if mode == "top_logprobs":
            return self.client.map(self._top_one, split, map_progress(progress))
        batches = [split[i : i + self.batch] for i in range(0, len(split), self.batch)]

        def results(batch: list[tuple[str, str]], parsed: list[PromptTokens | None]) -> list[LoglikelihoodResult]:
            out = []
            for (context, continuation), tokens in zip(batch, parsed):
                if tokens is None:
                    field = "logprobs" if mode == "echo" else "prompt_logprobs"
                    at = self._where("/completions", context + continuation)
                    raise at.error(f"choices[].{field}", "is missing: the server stopped returning prompt log-probs")
                if not context:
                    raise ProctorError(
                        "an empty context cannot be scored over the API: its first token has no log-prob"
                    )
                lps, greedy = continuation_scores(tokens, len(context))
                out.append(LoglikelihoodResult(float(sum(lps)), lps, greedy))
            return out

        def run(batch: list[tuple[str, str]]) -> list[LoglikelihoodResult]:
            return results(batch, self._score_prompts([c + x for c, x in batch], mode))

        first: list[LoglikelihoodResult] = []
        if batches and len(batches[0]) > 1 and self._lists_ok and not self._batch_checked:
            prompts = [c + x for c, x in batches[0]]
            parsed = self._score_prompts(prompts, mode)
            first = results(batches[0], parsed)  # a reply wrong in itself is named first
            self._cross_check(prompts, parsed, mode)
            batches = batches[1:]
            if progress:
                progress(len(first))
        done = map_progress(progress, len)  # a batch of requests: its length
        return first + [r for batch in self.client.map(run, batches, done) for r in batch]

    def _cross_check(self, prompts: list[str], parsed: list[PromptTokens | None], mode: str) -> None:
        """The first batch of a run, its first and last prompts sent again alone: a server that mixes up the
        prompts of one request (each choice given the log-probs of another prompt, the tokens right) passes every
        check of a single reply, so the batch is compared with the same prompts alone, once per backend."""
        self._batch_checked = True
        if not self._lists_ok:  # the server took no list: the prompts went one by one
            return
        n = len(prompts)
        for k in sorted({0, n - 1}):
            alone = self._score_prompts([prompts[k]], mode)[0]
            batched = parsed[k]
            if alone is None or batched is None:
                continue  # a missing reply is named where it is read
            pairs = [
                (i, a, b)
                for i, (a, b) in enumerate(zip(alone.logprobs, batched.logprobs))
                if a is not None and b is not None
            ]
            apart = [(i, a, b) for i, a, b in pairs if abs(a - b) > BATCH_SLACK_ABS + BATCH_SLACK_REL * abs(a)]
            far = [(i, a, b) for i, a, b in apart if abs(a - b) > BATCH_FAR_ABS + BATCH_SLACK_REL * abs(a)]
            if far or 2 * len(apart) > len(pairs):
                i, a, b = (far or apart)[0]
                field = "logprobs.token_logprobs" if mode == "echo" else "prompt_logprobs"
                at = self._where("/completions", prompts[k], f"prompt {k} of a request of {n}")
                raise at.error(
                    f"choices[{k}].{field}[{i}]",
                    f"is {b} in a request of {n} prompts but {a} when the same prompt is sent alone ({len(apart)} of "
                    f"{len(pairs)} positions differ): the server mixes up the prompts of one request (its batching). "
                    "Score one prompt per request with --model-arg batch=1",
                )

    def _top_one(self, pair: tuple[str, str]) -> LoglikelihoodResult:
        context, continuation = pair
        top = self._next_tokens(context, self.top_k, max_retries=None)
        if not top:
            raise ProctorError(f"'{self.shown_url}' returned no top_logprobs")
        best = max(top, key=top.__getitem__)
        if continuation in top:
            lp = float(top[continuation])
            return LoglikelihoodResult(lp, (lp,), continuation == best)
        # not among the top k: its log-prob is at most the k-th one (an upper bound, never the greedy token)
        lp = float(min(top.values()))
        log.warning(
            "continuation %r is not among the top %d next tokens: scored with the upper bound %.3f",
            continuation,
            len(top),
            lp,
        )
        return LoglikelihoodResult(lp, (lp,), False, bounded=True)

    def rolling_loglikelihood(
        self, requests: Sequence[RollingLoglikelihoodRequest], progress: Progress | None = None
    ) -> list[RollingLoglikelihoodResult]:
        mode = self.loglikelihood_mode
        if mode not in ("echo", "prompt_logprobs"):
            raise self._cannot()

        def one(r: RollingLoglikelihoodRequest) -> RollingLoglikelihoodResult:
            tokens = self._score_prompts([r.text], mode)[0]
            lps = tuple(lp for lp in (tokens.logprobs if tokens else ()) if lp is not None)
            return RollingLoglikelihoodResult(float(sum(lps)), len(lps), lps)

        return self.client.map(one, list(requests), map_progress(progress))


def _echoed(parsed: list[PromptTokens | None]) -> int | None:
    """The prompt tokens a reply spelled out (usage.prompt_tokens counts at least these); None when a prompt's
    tokens are missing (a server that ignores echo: nothing to compare)."""
    if any(p is None for p in parsed):
        return None
    return sum(len(p.tokens) for p in parsed if p is not None)
