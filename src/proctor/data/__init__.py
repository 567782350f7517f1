"""Reading samples: file formats, data sources, few-shot pools."""

from proctor.data.readers import read_rows
from proctor.data.sources import Sample, load_samples

__all__ = ["Sample", "load_samples", "read_rows"]
