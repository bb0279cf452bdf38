"""Training a CRF word segmenter over the segmentation columns (:mod:`gpu_text.crf.segmentation`):
the Python twin of ``gpu-text crf train --segmented``. Apart from segmentation.py because the
model imports the columns and this imports the model.
"""
from __future__ import annotations

from collections.abc import Iterable

from gpu_text.crf.data import read_segmented_bmes
from gpu_text.crf.model import CRF
from gpu_text.crf.segmentation import SegmentationFeatures


def fit_segmenter(lines: Iterable[str], features: SegmentationFeatures | None = None, pattern: str | None = None,
                  dev_lines: Iterable[str] | None = None, separator: str | None = None, **params) -> CRF:
    """A BMES word segmenter trained on word-segmented ``lines`` (words separated by whitespace,
    or ``separator``) over ``features``' columns (default :data:`~gpu_text.crf.segmentation.DEFAULT_COLUMNS`) with
    ``pattern`` (default ``features.pattern()``); ``params`` go to :class:`~gpu_text.crf.CRF`.
    The model keeps ``features`` (``segmentation_``), so :meth:`~gpu_text.crf.CRF.segment` and
    the model file rebuild the columns.

    >>> crf = fit_segmenter(["南京 市长", "长江 大桥", "南京 长江"], rho1=0.0, backend="cpu")
    >>> crf.segmentation_.columns, crf.segment(["南京长江大桥"])
    (('fold', 'class'), [['南京', '长江', '大桥']])
    """
    features = SegmentationFeatures() if features is None else features
    X, y = read_segmented_bmes(lines, separator, features=features)
    X_dev, y_dev = (read_segmented_bmes(dev_lines, separator, features=features) if dev_lines is not None
                    else (None, None))
    crf = CRF(pattern=features.pattern() if pattern is None else pattern, **params).fit(X, y, X_dev, y_dev)
    crf.segmentation_ = features
    return crf
