"""codascore: Codabench scoring programs for four scientific-ML challenges.

One scoring program serves every task; the task is named by the reference data (``ref/task.yaml``).
"""

__version__ = "0.1.0"
