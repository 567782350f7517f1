# A benchmark script in AISteer360's format (as in its notebooks/benchmarks): the built-in use case
# and metrics by their aisteer360 module names, Benchmark with AISteer360's constructor arguments.
# Run with: python -m proctor.usecases.aisteer_names benchmark.py MODEL_DIR SAVE_DIR
import sys
from pathlib import Path

from aisteer360.algorithms.core.specs import ControlSpec  # noqa: F401  (imported as upstream scripts do)
from aisteer360.evaluation.benchmark import Benchmark
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy import MCQAAccuracy
from aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_positional_bias import MCQAPositionalBias
from aisteer360.evaluation.use_cases.commonsense_mcqa.use_case import CommonsenseMCQA
from aisteer360.evaluation.utils.data_utils import flatten_profiles, summarize_by_config

MODEL, SAVE_DIR = sys.argv[1], Path(sys.argv[2])
HERE = Path(__file__).parent

commonsense_mcqa = CommonsenseMCQA(
    evaluation_data=str(HERE / "commonsense_mcqa" / "evaluation_qa.jsonl"),
    evaluation_metrics=[MCQAAccuracy(), MCQAPositionalBias()],
    num_samples=3,
    num_shuffling_runs=2,
)

benchmark = Benchmark(
    use_case=commonsense_mcqa,
    base_model_name_or_path=MODEL,
    steering_pipelines={"baseline": []},
    hf_model_kwargs={"torch_dtype": "float32"},
    gen_kwargs={"max_new_tokens": 4, "do_sample": True, "temperature": 0.7},
    device_map="cpu",
    num_trials=2,
    batch_size=4,
    save_dir=SAVE_DIR,
)
profiles = benchmark.run()
df = flatten_profiles(profiles, metric_accessors={"accuracy": ("MCQAAccuracy", "trial_mean")})
summary = summarize_by_config(df, metric_cols=["accuracy"])
