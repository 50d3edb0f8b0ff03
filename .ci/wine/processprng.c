/*
 * bcryptprimitives.dll for wine 8.0, which lacks it: Go's runtime (1.24 and
 * later) fills its random state through ProcessPrng from this DLL at start-up
 * and aborts when it cannot be found, so without this no Go test binary
 * starts under wine. ProcessPrng is given over advapi32's
 * SystemFunction036 (RtlGenRandom), which wine has. Used only by .ci/run to
 * run the windows tests under wine; nothing of it ships.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
	while (length > 0) {
		ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
		if (!SystemFunction036(data, chunk))
			return FALSE;
		data += chunk;
		length -= chunk;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
	(void)instance;
	(void)reason;
	(void)reserved;
	return TRUE;
}
