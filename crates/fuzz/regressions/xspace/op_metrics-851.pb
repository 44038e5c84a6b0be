
º	/host:CPU"`ÿÿÿÿÿÿÿÿ"`"o"m —ÂÒV"orandom_normal/mul:Mul"mmul:Mul"][`WIterator::Root::Prefetch::ForeverRepeat[0]::Prefetch::MapAndBatch::Shuffle::TensorSlice