"""Build stages the assets call as plain functions: selection, difficulty, hard paraphrases,
assembly of the output files, the Hugging Face dataset. Layer map: pipeline/README.md."""
