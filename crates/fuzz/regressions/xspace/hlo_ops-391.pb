
Q/device:TPU:3&XLA Ops""ÿÿÿÿÿÿÿÿ"	"â	*device_duration_ps