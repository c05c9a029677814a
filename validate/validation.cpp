#include "validate/validation.h"
