"""The files of a small ONERULER tree (NIAH and CWE task configs, books, vocabularies), written for proctor's
tests: the same files feed SEA-HELM's own generator (``tests/support/data/seahelm_oneruler/record_upstream.py``, run
once) and proctor's run (``tests/dialects/seahelm/test_seahelm_oneruler.py``). The texts are this project's own."""

from __future__ import annotations

from pathlib import Path

BOOK_EN = """Chapter One.  The Lighthouse

The keeper, Mr. Alder, climbed the stairs at 6 a.m. every day.\tHe counted them twice: there were 114, e.g. one for each year of the tower.
"Is the lamp lit?" asked Dr. Fenn from the door. "Not yet!" the keeper called back. The fog rolled in at 3.5 knots, or so the log said.
Nobody in the village, not even Mrs. Quill, remembered a night without the light... Yet the oil was running low.

Chapter Two.  The Supply Boat

The boat came on Tuesdays (weather permitting). It carried oil, bread, letters, and sometimes a newspaper from St. Ives.
Captain Rowe never stayed long; he said the rocks made him nervous! Did he mean it? The keeper thought so.
On the third Tuesday the boat did not come. The keeper waited on the jetty until the tide turned, then walked back up the hill.

Chapter Three.  The Long Night

He rationed the oil by halving the wick.   The beam grew weaker, but it still reached the reef.
At midnight a bell sounded somewhere to the east? No, it was only the buoy. He wrote everything down in the log, line by line.
By dawn the fog had lifted, and far out on the water a small sail was moving toward the island.
"""  # noqa: E501 (a file's text, line for line: SEA-HELM's recorded outputs were made from it)

BOOK_ZH = """第一章。灯塔

守塔人每天清晨六点爬上楼梯。他数了两遍：一共一百一十四级！医生在门口问：“灯亮了吗？”
“还没有。”守塔人回答。雾从海上慢慢涌来，村里没有人记得哪一个夜晚没有灯光。

第二章。补给船

补给船每逢星期二来，天气好的时候才来。船上有油、面包和信件，有时还有一份报纸。
第三个星期二，船没有来？守塔人在码头上一直等到潮水退去，然后走回山上。
他把灯芯剪短一半，光变弱了，却仍然照得到礁石。天亮的时候，远处的海面上出现了一张小小的帆。
"""

# en, zh, vi: the NIAH vocabulary (SEA-HELM's file has more languages; the loader reads its own column)
NOUNS = [
    ("apple", "苹果", "táo"),
    ("river", "河流", "dòng sông"),
    ("stone", "石头", "hòn đá"),
    ("candle", "蜡烛", "ngọn nến"),
    ("window", "窗户", "cửa sổ"),
    ("garden", "花园", "khu vườn"),
    ("bridge", "桥", "cây cầu"),
    ("feather", "羽毛", "lông vũ"),
    ("mirror", "镜子", "tấm gương"),
    ("ladder", "梯子", "cái thang"),
    ("compass", "指南针", "la bàn"),
    ("anchor", "锚", "mỏ neo"),
]

_VI_FIRST = ["bàn", "cây", "đèn", "gió", "hoa", "lá", "mưa", "núi", "sông", "trăng"]
_VI_SECOND = ["xanh", "đỏ", "nhỏ", "lớn", "mới", "cũ", "xa", "gần", "sáng"]
VI_WORDS = [f"{a} {b}" for a in _VI_FIRST for b in _VI_SECOND] + _VI_FIRST  # 100 entries, some of one syllable

NIAH_TASKS = {  # task id -> (min_num_keys, num_values, num_queries)
    "niah_single_t": (1, 1, None),
    "niah_multikey_t": (4, 1, None),
    "niah_multivalue_t": (4, 3, None),
    "niah_multiquery_t": (4, None, 2),
    "niah_none_t": (4, 0, None),
}

NIAH_TEMPLATES = {
    "en": (
        "Read the text below closely; a question about it follows.",
        "<text>\n{text}\n</text>\n\n<Question>Which special magic numbers for {needle_text} appear in the text? "
        'Give all of them, or "None".</Question>\n\nAnswer in this format:\n<Answer>the numbers</Answer>',
        "<Answer>",
    ),
    "zh": (
        "请仔细阅读下面的文字，之后回答问题。",
        "<文本>\n{text}\n</文本>\n\n<问题>文中与{needle_text}有关的魔法数字是哪些？请全部列出，若没有请回答“None”。</问题>\n\n"
        "请按以下格式回答：\n<答案>数字</答案>",
        "<答案>",
    ),
}

CWE_TEMPLATE = {
    "vi": (
        "Dưới đây là một danh sách từ đánh số. Hãy nhớ những từ xuất hiện nhiều nhất.",
        "<Danh sách>{list}</Danh sách>\n\n<Câu hỏi>{num_common_words} từ nào xuất hiện nhiều nhất?</Câu hỏi>\n\n"
        "Trả lời theo mẫu:\n<Câu trả lời>các từ, cách nhau bởi dấu phẩy</Câu trả lời>",
        "<Câu trả lời>",
    ),
}

NIAH_CONTEXT, NIAH_SAMPLES, SEED = 400, 3, 9472347
CWE = {
    "context_size": 700,
    "num_common_words": 3,
    "num_repeats_common_words": 6,
    "num_repeats_uncommon_words": 3,
    "num_samples": 2,
}


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _languages(templates: dict) -> str:
    lines = ["  languages:"]
    for lang, (preamble, task, tag) in templates.items():
        lines += [
            f"    {lang}:",
            "      filepath:",
            "      example_filepath:",
            "      max_tokens: 32",
            "      prompt_template:",
            f"        preamble: {_quoted(preamble)}",
            f"        task_template: {_quoted(task)}",
            "        answer_template:",
            f"        answer_tag: {_quoted(tag)}",
        ]
    return "\n".join(lines)


def niah_config(loader: str, metric: str) -> str:
    blocks = []
    for task, (keys, values, queries) in NIAH_TASKS.items():
        blocks.append(
            "\n".join(
                [
                    f"{task}:",
                    "  metadata:",
                    "    version: 1",
                    f"  name: {task}",
                    "  competency: long-context",
                    f"  dataloader_file: {loader}",
                    "  dataloader_class: NIAHDataloader",
                    f"  metric_file: {metric}",
                    "  metric_class: NIAHMetric",
                    "  metric: normalized_strict_accuracy",
                    "  aggregation_group: oneruler",
                    f"  random_seed: {SEED}",
                    f"  num_samples: {NIAH_SAMPLES}",
                    f"  min_num_keys: {keys}",
                    f"  num_values: {'' if values is None else values}",
                    f"  num_queries: {'' if queries is None else queries}",
                    f"  context_size: {NIAH_CONTEXT}",
                    _languages(NIAH_TEMPLATES),
                ]
            )
        )
    return "\n\n".join(blocks) + "\n"


def cwe_config(loader: str, metric: str) -> str:
    return (
        "\n".join(
            [
                "cwe_t:",
                "  metadata:",
                "    version: 1",
                "  name: cwe_t",
                "  competency: long-context",
                f"  dataloader_file: {loader}",
                "  dataloader_class: CWEDataloader",
                f"  metric_file: {metric}",
                "  metric_class: CweMetric",
                "  metric: normalized_strict_accuracy",
                "  aggregation_group: oneruler",
                f"  random_seed: {SEED}",
                *(f"  {key}: {value}" for key, value in CWE.items()),
                _languages(CWE_TEMPLATE),
            ]
        )
        + "\n"
    )


def write_inputs(root: Path) -> Path:
    """Config files, books and vocabularies under ``root`` (SEA-HELM's repository root); returns the
    ``seahelm_tasks`` folder. The dataloader and metric files are the caller's."""
    base = root / "seahelm_tasks" / "long_context" / "oneruler"
    niah, cwe = base / "niah", base / "cwe"
    for folder in (niah / "books" / "en", niah / "books" / "zh", niah / "vocab", cwe / "vocab"):
        folder.mkdir(parents=True, exist_ok=True)
    (niah / "books" / "en" / "lighthouse.txt").write_text(BOOK_EN, encoding="utf-8")
    (niah / "books" / "zh" / "lighthouse_zh.txt").write_text(BOOK_ZH, encoding="utf-8")
    rows = ["en\tdefinition\tzh\tvi"] + [f"{en} \t a thing\t{zh}\t{vi}" for en, zh, vi in NOUNS]
    (niah / "vocab" / "100_noun_list_translated.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (cwe / "vocab" / "vi_words.txt").write_text("\n".join(VI_WORDS) + "\n", encoding="utf-8")
    prefix = "seahelm_tasks/long_context/oneruler"
    (niah / "config.yaml").write_text(
        niah_config(f"{prefix}/niah/niah_dataloader.py", f"{prefix}/niah/niah_metric.py"), encoding="utf-8"
    )
    (cwe / "config.yaml").write_text(
        cwe_config(f"{prefix}/cwe/cwe_dataloader.py", f"{prefix}/cwe/cwe_metric.py"), encoding="utf-8"
    )
    return root / "seahelm_tasks"


# ---------------------------------------------------------------- SEA-HELM's generators, written out for the tests
# Task-folder code in SEA-HELM's dataloader format (not SEA-HELM's files: written here from its algorithm). NIAH:
# the books of the language joined by blank lines, runs of spaces and tabs made one space, tokenized with the
# evaluated model's tokenizer and cut to context_size - prompt tokens - min_num_keys x needle tokens (repeated
# first when too short), decoded, split into sentences (paragraphs on CR / LF / '|', sentence ends not after an
# abbreviation or a digit); one seed per row from Random(random_seed).sample(range(2**31 - 1), n); each row's
# Random(seed) draws values, needles (without replacement) and insertion sentences, a needle sentence going in
# front of the first occurrence of its sentence. CWE: the language's word list (sorted, de-duplicated, each with a
# leading space); Random(seed) shuffles it for the common words, a second Random(seed) the repeated uncommon ones,
# the word count estimated by powers of ten from the tokens of " <random number>." and the mean word tokens, a
# third Random(seed) the final list, numbered "1.<word>"; re-estimated up to three times while the list misses
# the token budget by 100 or more.

# the two loaders' conversations: SEA-HELM's base formatter on the row's turn
CONVERSATIONS = r"""
    def prepare_conversations_for_inference(self, turn, fewshot_as_multiturn=False):
        def with_conversation(row):
            roles, contents = self.generate_formatted_conversation(self.specific_task_config, row["prompts"][turn - 1],
                                                                   fewshot_as_multiturn=fewshot_as_multiturn)
            row["conversations"] = [{"role": r, "content": c} for r, c in zip(roles, contents)]
            return row

        self.dataset = self.dataset.map(with_conversation, num_proc=self.num_workers)
        return self.dataset["conversations"]

    def get_num_turns(self):
        return 1
"""

NIAH_LOADER = (
    r"""
import csv
import glob
import random
import re
import string

from datasets import Dataset
from transformers import AutoTokenizer

from src.dataloaders.base_dataloader import AbstractDataloader

NEEDLE = {"en": 'The special magic number for "{needle}" is: {value}. ', "zh": "“{needle}”的魔法数字是：{value}。"}
AND_WORD = {"en": ", and ", "zh": "和"}
CLOSING = "'\"”’』」｣》⟩)]}）］｝»"
BLANKS = string.whitespace + string.punctuation + "｡。，、､…：；？！။" + "“”‘’『』「」｢｣《》（）［］｛｝«»"
ENDS = {"zh": "｡。！？", "my": "။.!?"}
NOT_AFTER = (r"(?<!\b[a-z]\.)(?<!\b(?:Mr|Dr|Ms|Sr|Jr|Co|vs|Lt|St|Rd)\.)"
             r"(?<!\b(?:i\.e|e\.g|a\.m|p\.m|M\.A|Mrs|Inc|Ltd|etc|Rev|Hon|Gen|Sgt|Rep|Sen|Ave|Col)\.)(?<!\b(?:Ph\.D|Prof|Capt|Blvd|Corp)\.)")


def sentences(text, lang):
    boundary = re.compile(NOT_AFTER + r"(?<![\d])([" + ENDS.get(lang, ".!?") + "]+[" + re.escape(CLOSING) + r"\*_]*)(\s+)")
    out = []
    for paragraph in re.split("[\r|\n]", text):
        if not paragraph.strip(BLANKS):
            continue
        for piece in boundary.sub(lambda m: m.group(1) + "\x00", paragraph).split("\x00"):
            if piece.strip(BLANKS):
                out.append(piece.strip())
    return out


class NIAHDataloader(AbstractDataloader):
    def __init__(self, task_config, default_num_in_context_examples, is_base_model=False, model_name="", run_base_path="",
                 inference_file_type="jsonl", num_workers=16):
        super().__init__(task_config, default_num_in_context_examples, is_base_model=is_base_model, model_name=model_name,
                         run_base_path=run_base_path, inference_file_type=inference_file_type, num_workers=num_workers)
        cfg = self.task_config.config
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.seed, self.n, self.keys = cfg.random_seed, cfg.num_samples, cfg.min_num_keys
        self.values, self.queries, self.context_size = cfg.num_values, cfg.num_queries, cfg.context_size
        template = self.specific_task_config.prompt_template
        self.prompt_tokens = self._count(template["preamble"] + template["task_template"])
        with open("seahelm_tasks/long_context/oneruler/niah/vocab/100_noun_list_translated.tsv", encoding="utf-8", newline="") as handle:
            self.vocab = [row[self.lang].strip() for row in csv.DictReader(handle, delimiter="\t")]
        self.needle = NEEDLE[self.lang]
        self.needle_tokens = self._count(self.needle.format(needle=random.Random(self.seed).choice(self.vocab), value=123456789))

    def _count(self, text):
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def load_dataset(self, limit=None):
        n = limit if limit is not None and limit <= self.n else self.n
        books = "\n\n".join(open(p, encoding="utf-8").read() for p in sorted(glob.glob(f"seahelm_tasks/long_context/oneruler/niah/books/{self.lang}/*.txt")))
        books = re.sub(r"[ \t]+", " ", books)
        budget = self.context_size - self.prompt_tokens - self.needle_tokens * self.keys
        ids = self.tokenizer(books, add_special_tokens=False)["input_ids"]
        if len(ids) < budget:
            ids = self.tokenizer(books * (budget // len(ids) + 1), add_special_tokens=False)["input_ids"]
        self.text = self.tokenizer.decode(ids[:budget])
        self.sentences = sentences(self.text, self.lang)
        seeds = random.Random(self.seed).sample(range(2**31 - 1), n)
        self.dataset = Dataset.from_dict({"seed": seeds}).map(lambda row: self.make_row(row["seed"]), num_proc=32)

    def _insert(self, text, rng, needle, value):
        point = rng.choice(self.sentences)
        return text.replace(point, self.needle.format(needle=needle, value=value) + point, 1)

    def make_row(self, seed):
        rng, text, pool, labels, asked = random.Random(seed), self.text, list(self.vocab), [], []
        if self.queries is not None:
            for k in range(self.keys):
                value = str(rng.randint(0, 2**31 - 1))
                needle = rng.choice(pool)
                pool.remove(needle)
                text = self._insert(text, rng, needle, value)
                if k < self.queries:
                    labels.append(value)
                    asked.append(needle)
        else:
            needle = rng.choice(pool)
            pool.remove(needle)
            asked.append(needle)
            if self.values == 0:
                labels.append("none")
            for _ in range(self.values):
                value = str(rng.randint(0, 2**31 - 1))
                text = self._insert(text, rng, needle, value)
                labels.append(value)
            for _ in range(self.values, self.keys):
                value = str(rng.randint(0, 2**31 - 1))
                other = rng.choice(pool)
                pool.remove(other)
                text = self._insert(text, rng, other, value)
        quote = "“{}”" if self.lang == "zh" else '"{}"'
        shown = [quote.format(n) for n in asked]
        if len(shown) > 2:
            shown = [("，" if self.lang == "zh" else ", ").join(shown[:-1]), shown[-1]]
        return {"prompts": [{"text": text, "needle_text": AND_WORD[self.lang].join(shown)}], "label": labels,
                "metadata": {"num_queries": self.queries, "num_values": self.values, "num_keys": self.keys}}

"""  # noqa: E501 (a file's text, line for line: SEA-HELM's recorded outputs were made from it)
    + CONVERSATIONS
)

CWE_LOADER = (
    r"""
import random

from datasets import Dataset
from transformers import AutoTokenizer

from src.dataloaders.base_dataloader import AbstractDataloader


class CWEDataloader(AbstractDataloader):
    def __init__(self, task_config, default_num_in_context_examples, is_base_model=False, model_name="", run_base_path="",
                 inference_file_type="jsonl", num_workers=16):
        super().__init__(task_config, default_num_in_context_examples, is_base_model=is_base_model, model_name=model_name,
                         run_base_path=run_base_path, inference_file_type=inference_file_type, num_workers=num_workers)
        cfg = self.task_config.config
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        template = self.specific_task_config.prompt_template
        self.prompt_tokens = self._lengths([template["preamble"] + template["task_template"]])[0]
        self.context_size, self.n, self.seed = cfg.context_size, cfg.num_samples, cfg.random_seed
        self.common, self.common_repeats, self.uncommon_repeats = cfg.num_common_words, cfg.num_repeats_common_words, cfg.num_repeats_uncommon_words

    def _lengths(self, texts, special=False):
        return [len(ids) for ids in self.tokenizer(texts, add_special_tokens=special)["input_ids"]]

    def load_dataset(self, limit=None):
        n = limit if limit is not None and limit <= self.n else self.n
        with open(f"seahelm_tasks/long_context/oneruler/cwe/vocab/{self.lang}_words.txt") as handle:
            words = [line.strip() for line in handle]
        self.words = [" " + w for w in sorted(set(words))]
        lengths = self._lengths(self.words)
        self.mean_tokens = sum(lengths) / len(lengths)
        seeds = random.Random(self.seed).sample(range(2**31 - 1), n)
        self.dataset = Dataset.from_dict({"seed": seeds}).map(lambda row: self.make_row(row["seed"]), num_proc=32)

    def estimate(self, budget):
        count, power = 0, 0
        while True:
            number = self._lengths([f" {random.randint(10**power, 10 ** (power + 1) - 1)}."])[0]
            step = 10 ** (power + 1) - 10**power
            if step * (number + self.mean_tokens) > budget:
                return int(count + budget // (number + self.mean_tokens))
            count, budget, power = count + step, budget - step * (number + self.mean_tokens), power + 1

    def make_row(self, seed, deviation=100):
        shuffled = list(self.words)
        random.Random(seed).shuffle(shuffled)
        common, uncommon = shuffled[: self.common], shuffled[self.common :]
        excess = self.common * self.common_repeats * (sum(self._lengths(common)) / len(common) - self.mean_tokens)
        count = self.estimate(self.context_size - self.prompt_tokens - excess)
        uncommon = uncommon * self.uncommon_repeats
        random.Random(seed).shuffle(uncommon)
        repeated = common * self.common_repeats
        for attempt in range(3):
            chosen = repeated + uncommon[: count - len(repeated)]
            random.Random(seed).shuffle(chosen)
            listed = " ".join(f"{i}.{w}" for i, w in enumerate(chosen, start=1))
            tokens = self._lengths([listed], special=True)[0]
            gap = self.context_size - self.prompt_tokens - tokens
            if abs(gap) < deviation:
                break
            count = self.estimate(gap + self.context_size - self.prompt_tokens - excess)
        return {"prompts": [{"list": listed, "num_common_words": self.common}], "label": [w.strip() for w in common],
                "metadata": {"num_tokens": tokens + self.prompt_tokens}}

"""  # noqa: E501 (a file's text, line for line: SEA-HELM's recorded outputs were made from it)
    + CONVERSATIONS
)

WORDS_METRIC = r'''
from src.metrics.seahelm_metric import SeaHelmMetric


class {name}(SeaHelmMetric):
    """Share of the reference items found in the answer, split on commas; strict: all of them."""

    def __init__(self, dataloader, task_config):
        super().__init__(dataloader=dataloader, task_config=task_config)
        tag = task_config.config["languages"][self.lang]["prompt_template"]["answer_tag"]
        self.regex_string = rf"(?<={{tag}})([\s\S]*)(?=</)"

    def extract_response(self, response, use_lowercase=False):
        return str(super().extract_response(response, return_original_response_on_failure=False))

    def calculate_metrics(self):
        frame = self.dataloader.dataframe
        scores = []
        for pred, ref in zip(frame[self.postprocessed_response_column], frame[self.label_column]):
            found = {{p.strip().lower() for p in pred.split(",")}}
            wanted = {{r.strip().lower() for r in ref}}
            scores.append(len(found & wanted) / len(wanted) if wanted else 0.0)
        strict = [1 if s == 1.0 else 0 for s in scores]
        self.dataloader.update_individual_scores([{{"normalized_strict_accuracy": x}} for x in strict])
        return {{"strict_accuracy": 100 * sum(strict) / len(strict), "accuracy": 100 * sum(scores) / len(scores),
                "normalized_strict_accuracy": 100 * sum(strict) / len(strict)}}
'''


def write_tree(root: Path) -> Path:
    """``write_inputs`` plus the written-out NIAH / CWE dataloaders and their metrics: a SEA-HELM root proctor runs."""
    tasks = write_inputs(root)
    base = tasks / "long_context" / "oneruler"
    (base / "niah" / "niah_dataloader.py").write_text(NIAH_LOADER, encoding="utf-8")
    (base / "cwe" / "cwe_dataloader.py").write_text(CWE_LOADER, encoding="utf-8")
    (base / "niah" / "niah_metric.py").write_text(WORDS_METRIC.format(name="NIAHMetric"), encoding="utf-8")
    (base / "cwe" / "cwe_metric.py").write_text(WORDS_METRIC.format(name="CweMetric"), encoding="utf-8")
    return tasks
