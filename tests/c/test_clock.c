#include "mt_test.h"
int main(void){TEST_DONE();}
