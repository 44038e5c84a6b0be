
¼/device:TPU:3TXLA Ops""
‚Ã©ûƒ½"òó…½""
ÖÀ¯¸¡½"ÿÿÿÿÿÿÿÿ"	"
º·¾¯å’"ˆ'"*"íÍ¸ìïŽ’—©*"
program_id*device_offset_ps*device_duration_ps