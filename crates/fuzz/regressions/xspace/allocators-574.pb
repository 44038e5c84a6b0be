
l	/host:CPU"" ÿÿÿÿÿÿÿÿ" €Ì#"MemoryAllocation*bytes_reserved*bytes_allocated