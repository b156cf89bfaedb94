"""The Cloud Scheduler v1 API as plain-typed methods, under both wire formats.

:class:`~scheduler_emulator.api.v1.SchedulerApi` owns every rule of the v1 API that is not a
rule of the Job resource itself: resource names and their parent, page sizes and page tokens,
update masks, output-only fields, locations, the CMEK configuration and its operations. The
REST handlers (:mod:`scheduler_emulator.server.api`) and the gRPC servicer
(:mod:`scheduler_emulator.server.grpc_api`) only translate their wire format to these methods
and back, so both surfaces give the same answers and the same errors
(:class:`~scheduler_emulator.domain.errors.ApiError`).
"""
