
P	/host:CPU"" €€€€€€€€€"MemoryAllocation*allocation_bytes