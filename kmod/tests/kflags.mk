# SPDX-License-Identifier: GPL-2.0
# Read after the kernel's own Makefile (make -C KDIR -f Makefile -f this):
# prints the flags that find the kernel's headers, as Kbuild gives them.
kmock-flags:
	@echo 'KSRC := $(abspath $(srctree))'
	@echo 'KOBJ := $(abspath $(objtree))'
	@echo 'KSERIES := $(VERSION).$(PATCHLEVEL)'
	@echo 'KINCLUDE := $(NOSTDINC_FLAGS) $(LINUXINCLUDE)'
