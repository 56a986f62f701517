"""Small models in the published formats, built here (no model can be downloaded on the
machines this project is tested on), for the tests and the classifier benchmark:

- `dclm_fasttext`: a fastText supervised model in DCLM's label format (`__label__hq` /
  `__label__cc`, word bigrams), trained on the project's example texts joined as DCLM joins
  them;
- `transformer_folder`: a BERT sequence-classification model with random weights and a
  WordPiece tokenizer trained on the example texts, written with `save_pretrained` (the
  layout of HuggingFaceFW/fineweb-edu-classifier: config.json, model.safetensors,
  tokenizer.json, tokenizer_config.json); `onnx=True` adds model.onnx, as an export of it.
"""

from __future__ import annotations

from pathlib import Path

from curate_pipeline.document.quality.preprocess import dclm
from curate_pipeline.examples.quality_texts import BAD_SENTENCES, GOOD_SENTENCES, example_documents

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def example_texts(n: int = 80) -> tuple[list[str], list[str]]:
    return example_documents(GOOD_SENTENCES, n, 1), example_documents(BAD_SENTENCES, n, 2)


def dclm_fasttext(path: str | Path, n: int = 80):
    """Train and save a DCLM-format fastText classifier; returns the loaded model."""
    import fasttext

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    good, bad = example_texts(n)
    lines = path.with_suffix(".train.txt")
    lines.write_text("".join(f"__label__hq {dclm(t)}\n" for t in good)
                     + "".join(f"__label__cc {dclm(t)}\n" for t in bad),
                     encoding="utf-8")  # fmt: skip
    model = fasttext.train_supervised(input=str(lines), wordNgrams=2, epoch=25, lr=0.5, dim=16,
                                      seed=0, thread=1, verbose=0)  # fmt: skip
    model.save_model(str(path))
    lines.unlink()
    return model


def transformer_folder(folder: str | Path, labels: list[str] | None = None, *,
                       hidden: int = 32, layers: int = 2, heads: int = 2, max_length: int = 64,
                       vocab: int = 400, seed: int = 0, onnx: bool = False,
                       init_range: float = 0.5) -> Path:  # fmt: skip
    """A random BERT classifier saved with save_pretrained: regression (labels None, one
    output) or classification over `labels`. BERT-base: hidden 768, layers 12, heads 12."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    folder = Path(folder)
    good, bad = example_texts()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIAL)
    tok.train_from_iterator(good + bad, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=max_length)  # fmt: skip
    torch.manual_seed(seed)
    n = len(labels) if labels else 1
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * hidden,
        max_position_embeddings=max(max_length, 64), num_labels=n,
        initializer_range=init_range,  # wide random weights: scores that differ by text
        problem_type="regression" if not labels else "single_label_classification",
        id2label={i: lab for i, lab in enumerate(labels or ["score"])},
        label2id={lab: i for i, lab in enumerate(labels or ["score"])},
    )  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    if onnx:
        enc = fast(["an example", "another example text"], return_tensors="pt", padding=True)
        torch.onnx.export(
            model, (enc["input_ids"], enc["attention_mask"]), str(folder / "model.onnx"),
            input_names=["input_ids", "attention_mask"], output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                          "attention_mask": {0: "batch", 1: "tokens"}, "logits": {0: "batch"}},
            dynamo=False,
        )  # fmt: skip
    return folder
