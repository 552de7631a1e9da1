// loom::data, the data loading of the C++ API: IDX files, datasets and the DataLoader.
#pragma once

#include "loom/data/dataloader.h"
#include "loom/data/idx.h"
