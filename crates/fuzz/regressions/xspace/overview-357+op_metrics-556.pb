
`	/host:CPU"ÿÿÿÿÿÿÿÿ"3&tf_XLAPjRtCpuClient/799174345608010530"	ø«ü"*
hlo_op