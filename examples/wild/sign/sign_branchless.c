/* sign_branchless.c: sign(x) in {-1, 0, 1} as (x > 0) - (x < 0), C, int results converted to
 * float. */
void sign_branchless(const float *a, float *out, int n)
{
    int i;
    for (i = 0; i < n; i++)
        out[i] = (float)((a[i] > 0.0f) - (a[i] < 0.0f));
}
