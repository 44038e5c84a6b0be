
h/device:TPU:3%XLA Ops""
ÖÀ¯¸¡½"ÿÿÿÿÿÿÿÿ*device_offset_ps*device_duration_ps