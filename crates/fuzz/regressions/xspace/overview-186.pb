
6	/host:CPU	"¯'Àÿ"¯'identity_RetVal:_Retval
5/device:GPU:6$Stream #143(MemcpyH2D)"
ÿÿÿÿÿÿÿÿ