"""Golden model of the KVMU: memory map, jobs, range coalescing and burst legalisation, and the session driver."""

from .bursts import EVICT, PREFETCH, Burst, Coalescer, Range, legalise
from .jobs import Job, load_kvmu_jobs, mask_beats, random_kvmu_jobs, save_kvmu_jobs
from .model import CAUSES, KVMUModel, Response
from .session import kvmu_report, run_jobs, session_jobs

__all__ = ["EVICT", "PREFETCH", "Burst", "Coalescer", "Range", "legalise", "Job", "load_kvmu_jobs", "mask_beats",
           "random_kvmu_jobs", "save_kvmu_jobs", "CAUSES", "KVMUModel", "Response", "kvmu_report", "run_jobs",
           "session_jobs"]
