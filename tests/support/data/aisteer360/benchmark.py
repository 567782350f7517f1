# Written for proctor's tests in AISteer360's benchmark-script format (not copied from AISteer360):
# a script that builds the built-in commonsense MCQA use case and its metrics from their aisteer360
# module paths, hands them to AISteer360's Benchmark constructor and summarises the profiles with
# aisteer360's data utilities. proctor runs it with:
#     python -m proctor.dialects.aisteer.aisteer_names benchmark.py MODEL_DIR SAVE_DIR
import sys
from pathlib import Path

from aisteer360.algorithms.core.specs import ControlSpec  # noqa: F401  (scripts import it; it must resolve)
from aisteer360.evaluation.benchmark import Benchmark
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy import MCQAAccuracy
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_positional_bias import MCQAPositionalBias
from aisteer360.evaluation.use_cases.commonsense_mcqa.use_case import CommonsenseMCQA
from aisteer360.evaluation.utils.data_utils import flatten_profiles, summarize_by_config

model_dir, out_dir = sys.argv[1], Path(sys.argv[2])
questions = Path(__file__).parent / "commonsense_mcqa" / "evaluation_qa.jsonl"

# every one of the three questions, each asked under two option orders
mcqa = CommonsenseMCQA(
    evaluation_data=str(questions),
    evaluation_metrics=[MCQAAccuracy(), MCQAPositionalBias()],
    num_samples=3,
    num_shuffling_runs=2,
)
sampling = {"max_new_tokens": 4, "do_sample": True, "temperature": 0.7}

# only the unsteered configuration, run twice: the trials differ through sampling
profiles = Benchmark(
    use_case=mcqa,
    base_model_name_or_path=model_dir,
    steering_pipelines={"baseline": []},
    hf_model_kwargs={"torch_dtype": "float32"},
    gen_kwargs=sampling,
    device_map="cpu",
    num_trials=2,
    batch_size=4,
    save_dir=out_dir,
).run()

table = flatten_profiles(profiles, metric_accessors={"accuracy": ("MCQAAccuracy", "trial_mean")})
summary = summarize_by_config(table, metric_cols=["accuracy"])
