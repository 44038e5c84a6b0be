
&/device:TPU:2XLA Ops"
ÿÿÿÿÿÿÿÿ
d/device:TPU:3!XLA Ops""
‚Ã©ûƒ½"òó…½*device_offset_ps*device_duration_ps