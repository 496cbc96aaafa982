// SPDX-License-Identifier: Apache-2.0
// The version of the library actually linked, which may differ from the header a caller saw.
#include "attnscore/attnscore.h"

extern "C" {

const char *attnscore_version(void) { return ATTNSCORE_VERSION_STRING; }

}  // extern "C"
