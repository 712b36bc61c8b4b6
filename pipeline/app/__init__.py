"""The top layer: the `cacheeval` CLI (`cli`), the build's assets, checks and jobs (`jobs`, what the CLI
runs), the Dagster definitions the UI loads (`definitions`) and the jobs that are not one asset group
(`ui_job`, `dask_job`). Layer map: pipeline/README.md."""
