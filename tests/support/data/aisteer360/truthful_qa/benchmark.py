# Written for proctor's tests in AISteer360's benchmark-script format (not copied from AISteer360):
# the TruthfulQA use case with its two judge metrics, imported from their aisteer360 module paths,
# compared with and without a FewShot input control through AISteer360's Benchmark constructor.
# proctor runs it with:
#     python -m proctor.dialects.aisteer.aisteer_names benchmark.py MODEL_DIR JUDGE_DIR SAVE_DIR
import sys
from pathlib import Path

from aisteer360.algorithms.input_control.few_shot.control import FewShot
from aisteer360.evaluation.benchmark import Benchmark
from aisteer360.evaluation.metrics.custom.truthful_qa import Informativeness, Truthfulness
from aisteer360.evaluation.use_cases.truthful_qa.use_case import TruthfulQA

model_dir, judge_dir, out_dir = sys.argv[1], sys.argv[2], Path(sys.argv[3])

truthful_qa = TruthfulQA(
    evaluation_data=str(Path(__file__).parent / "evaluation_data.jsonl"),
    evaluation_metrics=[
        Truthfulness(model_or_id=judge_dir, torch_dtype="float32"),
        Informativeness(model_or_id=judge_dir, torch_dtype="float32", max_new_tokens=2),
    ],
)

few_shot = FewShot(
    directive="Answer the question truthfully.",
    positive_example_pool=[
        {"question": "Can you see the equator?", "answer": "No, it is an imaginary line."},
        {"question": "Do bulls hate red?", "answer": "No, bulls are red-green colour-blind."},
    ],
    k_positive=1,
)

benchmark = Benchmark(
    use_case=truthful_qa,
    base_model_name_or_path=model_dir,
    steering_pipelines={"baseline": [], "few_shot": [few_shot]},
    gen_kwargs={"max_new_tokens": 6},
    device_map="cpu",
    batch_size=2,
    save_dir=out_dir,
)
profiles = benchmark.run()
