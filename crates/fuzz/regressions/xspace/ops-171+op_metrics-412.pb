
3/device:TPU:3"XLA Ops"	Žˆë„Ó"ÿÿÿÿÿÿÿÿ