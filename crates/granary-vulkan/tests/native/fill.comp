#version 450
// A compute stage whose workgroup size and written value are specialization constants.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VALUE = 1;
layout(set = 0, binding = 0) buffer Out {
    uint values[];
} out_buffer;
void main() {
    out_buffer.values[gl_GlobalInvocationID.x] = VALUE;
}
