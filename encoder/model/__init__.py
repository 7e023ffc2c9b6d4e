"""A local HF model folder as input: its tokenizer, its chat template, and the ocml format that
template speaks (detected by comparing ids on probe conversations).

    from ocml.encoder.model import detect_format
    det = detect_format("path/to/model")        # FormatDetectionError when nothing matches
    enc = det.encoder()                         # the detected format with the model's tokenizer
"""

from ..formats.declare import Candidate
from .detect import Detection, FormatDetectionError, ProbeResult, detect_format
from .folder import ModelFolder, ModelFolderError

__all__ = ["Candidate", "Detection", "FormatDetectionError", "ModelFolder", "ModelFolderError", "ProbeResult",
           "detect_format"]
