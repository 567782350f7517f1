"""AISteer360's generic metrics (``aisteer360.evaluation.metrics.generic.*``) on proctor.

Expected numbers come from AISteer360's formulas written out here (perplexity from a right-padded
batch with the pad token masked, reward logits with their transforms, SQuAD EM/F1), computed with
transformers directly, never with proctor's code."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

import pytest

from proctor.dialects.aisteer.aisteer_names import aisteer360_names
from proctor.dialects.aisteer.generic_metrics import FACTUALITY_PROMPT, RELEVANCE_PROMPT
from tests.support.aisteer_fakes import ScriptedJudge


# ---------------------------------------------------------------- ShortAnswerMatch
def squad_normalize(text):
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_f1(prediction, gold):
    p, g = squad_normalize(prediction).split(), squad_normalize(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if not same:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def test_short_answer_match_is_squad_em_and_f1():
    responses = ["The capital of France is Paris.", "paris", None, "Blue whale", "the an a"]
    references = ["Paris", ["Lyon", "Paris!"], "Rome", ["blue whale", "whale"], ""]
    em = [
        max(float(squad_normalize(r or "") == squad_normalize(c)) for c in ([g] if isinstance(g, str) else g))
        for r, g in zip(responses, references)
    ]
    f1 = [max(squad_f1(r or "", c) for c in ([g] if isinstance(g, str) else g)) for r, g in zip(responses, references)]
    with aisteer360_names():
        from aisteer360.evaluation.metrics.generic.short_answer_match import ShortAnswerMatch
    out = ShortAnswerMatch()(responses=responses, reference_answers=references)
    assert out == {"exact_match": pytest.approx(sum(em) / 5), "f1": pytest.approx(sum(f1) / 5)}
    assert out["exact_match"] == pytest.approx(3 / 5)  # "paris", "Blue whale", and "the an a" vs "" (both empty)
    with pytest.raises(ValueError, match="needs `references`"):
        ShortAnswerMatch()(responses=["x"])


# ---------------------------------------------------------------- Perplexity
def upstream_perplexities(texts, model, tokenizer, batch_size):
    """perplexity.py: right-padded batch without special tokens, BOS prepended, cross-entropy of each next
    token, tokens equal to the pad token masked, exp of the mean."""
    import torch
    import torch.nn.functional as F

    tokenizer.padding_side = "right"
    out = []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer(texts[start : start + batch_size], padding=True, add_special_tokens=False, return_tensors="pt")
        ids = torch.cat([torch.full((enc.input_ids.size(0), 1), tokenizer.bos_token_id), enc.input_ids], dim=1)
        with torch.no_grad():
            logits = model(ids).logits[:, :-1]
        labels = ids[:, 1:]
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="none").view(
            labels.size()
        )
        mask = labels.ne(tokenizer.pad_token_id)
        out.extend(torch.exp((loss * mask).sum(1) / mask.sum(1)).tolist())
    return out


def test_perplexity_matches_upstream_formula(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    texts = ["The sky is blue.", "Hello", "A somewhat longer sentence about nothing in particular, really.", "ok then"]
    expected = upstream_perplexities(texts, model, tokenizer, batch_size=3)
    with aisteer360_names():
        from aisteer360.evaluation.metrics import Perplexity
    for metric in (Perplexity(str(tiny_model_dir), batch_size=3), Perplexity(model, tokenizer=tokenizer, batch_size=2)):
        out = metric(responses=texts)
        assert out["perplexities"] == pytest.approx(expected, rel=1e-4)
        assert out["mean_perplexity"] == pytest.approx(sum(expected) / len(expected), rel=1e-4)
    # without BOS the first token is not scored: a one-token text has nothing to score
    assert math.isnan(Perplexity(model, tokenizer=tokenizer, add_bos=False)(responses=["Hello"])["perplexities"][0])


# ---------------------------------------------------------------- RewardScore
@pytest.fixture(scope="module")
def reward_models(smollm2_tokenizer_dir, tmp_path_factory):
    """Tiny random Llama sequence classifiers (1 and 3 labels) with the SmolLM2 tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    folders = {}
    for labels in (1, 3):
        torch.manual_seed(labels)
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_labels=labels,
            pad_token_id=tokenizer.pad_token_id,
        )
        folder = tmp_path_factory.mktemp(f"reward{labels}")
        LlamaForSequenceClassification(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[labels] = folder
    return folders


def upstream_rewards(model, tokenizer, responses, prompts, transform, label_index=0):
    """reward_score.py, one example at a time: logits of (prompt, response) pairs, then the transform."""
    import torch

    out = []
    for i, response in enumerate(responses):
        args = (prompts[i], response) if prompts else (response,)
        with torch.no_grad():
            logits = model(**tokenizer(*args, truncation=True, max_length=1024, return_tensors="pt")).logits[0]
        if logits.numel() == 1:
            value = logits[0]
            out.append(float(torch.sigmoid(value) if transform == "sigmoid" else value))
        elif transform == "softmax":
            out.append(float(torch.softmax(logits, -1)[label_index]))
        elif transform == "log_softmax":
            out.append(float(torch.log_softmax(logits, -1)[label_index]))
        else:
            out.append(float(logits[label_index]))
    return out


def test_reward_score_matches_upstream_formula(reward_models):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    responses = ["A kind and helpful answer.", "No.", "Here is a longer reply with several more words in it."]
    prompts = ["Be kind.", "Answer briefly, please.", "Explain."]
    with aisteer360_names():
        from aisteer360.evaluation.metrics.generic.reward_score import RewardScore
    single = AutoModelForSequenceClassification.from_pretrained(reward_models[1]).eval()
    tokenizer = AutoTokenizer.from_pretrained(reward_models[1])
    for transform in ("identity", "sigmoid"):
        expected = upstream_rewards(single, tokenizer, responses, prompts, transform)
        out = RewardScore(str(reward_models[1]), batch_size=2, score_transform=transform)(
            responses=responses, prompts=prompts
        )
        assert out["rewards"] == pytest.approx(expected, abs=1e-4)
        assert out["mean_reward"] == pytest.approx(sum(expected) / 3, abs=1e-4)
    # generation records: responses and their text prompts
    records = [{"response": r, "prompt": p} for r, p in zip(responses, prompts)]
    out = RewardScore(single, tokenizer=tokenizer, return_logits=True)(responses=records)
    assert out["rewards"] == pytest.approx(
        upstream_rewards(single, tokenizer, responses, prompts, "identity"), abs=1e-4
    )
    assert len(out["logits"]) == 3 and len(out["logits"][0]) == 1
    three = AutoModelForSequenceClassification.from_pretrained(reward_models[3]).eval()
    for transform in ("softmax", "log_softmax", "identity"):
        expected = upstream_rewards(three, tokenizer, responses, None, transform, label_index=2)
        out = RewardScore(three, tokenizer=tokenizer, score_transform=transform, label_index=2)(responses=responses)
        assert out["rewards"] == pytest.approx(expected, abs=1e-4)
    assert RewardScore(single, tokenizer=tokenizer)(responses=[]) == {"mean_reward": 0.0, "rewards": []}
    with pytest.raises(ValueError, match="several labels"):
        RewardScore(single, tokenizer=tokenizer, score_transform="softmax")(responses=["x"])
    with pytest.raises(ValueError, match="needs its tokenizer"):
        RewardScore(single)


# ---------------------------------------------------------------- Factuality, Relevance
@pytest.mark.parametrize("metric_name, template", [("Factuality", FACTUALITY_PROMPT), ("Relevance", RELEVANCE_PROMPT)])
def test_judge_metrics_send_upstream_prompts_and_average_scores(metric_name, template):
    def reply(prompt):  # the score depends on the response being judged
        return '```json\n{"score": %d}\n```' % (7 if "Paris" in prompt else 2)

    judge = ScriptedJudge(reply)
    with aisteer360_names():
        import aisteer360.evaluation.metrics as metrics
    metric = getattr(metrics, metric_name)(judge)
    responses, prompts = ["Paris is the capital.", "It is Lyon."], ["Capital of France?", "Capital of France?"]
    out = metric(responses=responses, prompts=prompts)
    # scores are clamped to the scale (1, 5): 7 -> 5
    assert (
        out["scores"] == [5.0, 2.0] and out["mean_score"] == pytest.approx(3.5) and out["raw_scores"] == [[5.0], [2.0]]
    )
    for prompt, response, question in zip(judge.prompts, responses, prompts):
        filled = template.strip().format(prompt=question, response=response, lower_bound=1, upper_bound=5)
        assert prompt.startswith("<user>" + filled)
